//! The weights of a BERT encoder exported to ONNX, read without an ONNX
//! runtime: the file is decoded with message types for the few fields of
//! `onnx.proto` it needs, and the graph is walked only to learn which
//! initializer is which layer's weight.
//!
//! Field numbers are those of the official `onnx/onnx.proto` (IR version 7
//! onwards; the file here is IR 6, which has the same numbers):
//! `ModelProto.graph` 7, `GraphProto.node` 1 and `initializer` 5,
//! `NodeProto.input` 1, `output` 2, `op_type` 4, `TensorProto.dims` 1,
//! `data_type` 2, `float_data` 4, `int32_data` 5, `name` 8, `raw_data` 9.
//! Every other field is skipped by the decoder.
//!
//! A dynamically quantised export (onnxruntime's `quantize_dynamic`) names
//! its matrices opaquely (`onnx::MatMul_1525_quantized`): each linear layer
//! is a `MatMulInteger` of the quantised activations with an int8 or uint8
//! initializer `W` (`in × out`, ONNX `MatMul` computes `x · W`), then a
//! `Cast`, a `Mul` by the activation scale times the weight scale (a `Mul`
//! of its own whose other input is the weight scale initializer), then an
//! `Add` of the bias, which keeps its PyTorch name
//! (`encoder.layer.0.attention.self.query.bias`). Following each matrix to
//! its bias names it. A float export (`MatMul` of an `f32` initializer,
//! then the bias `Add`) is read the same way.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// `onnx.ModelProto`: only the graph.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ModelProto {
    /// `graph = 7`.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

/// `onnx.GraphProto`: nodes (in topological order) and initializers.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct GraphProto {
    /// `node = 1`.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// `initializer = 5`.
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
}

/// `onnx.NodeProto`: what an operator reads and writes.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct NodeProto {
    /// `input = 1`: value names, in the operator's argument order.
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// `output = 2`.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// `op_type = 4`, e.g. `"MatMulInteger"`.
    #[prost(string, tag = "4")]
    pub op_type: String,
}

/// `onnx.TensorProto`: a constant's shape, element type and values.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TensorProto {
    /// `dims = 1`: the shape, outermost first.
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// `data_type = 2`: [`FLOAT`], [`UINT8`], [`INT8`], [`INT32`], …
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// `float_data = 4` (packed): values of a `FLOAT` tensor not in `raw_data`.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// `int32_data = 5` (packed): values of an integer tensor of 32 bits or
    /// fewer not in `raw_data`, one per element.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// `name = 8`.
    #[prost(string, tag = "8")]
    pub name: String,
    /// `raw_data = 9`: the values as fixed-width little-endian bytes.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
}

/// `TensorProto.DataType.FLOAT`.
pub(crate) const FLOAT: i32 = 1;
/// `TensorProto.DataType.UINT8`.
pub(crate) const UINT8: i32 = 2;
/// `TensorProto.DataType.INT8`.
pub(crate) const INT8: i32 = 3;
/// `TensorProto.DataType.INT32`.
pub(crate) const INT32: i32 = 6;

fn format_err(what: impl std::fmt::Display) -> Error {
    Error::Embedder(format!("ONNX model: {what}").into())
}

impl TensorProto {
    /// Number of elements its shape holds (1 for a scalar).
    fn len(&self) -> Result<usize> {
        self.dims.iter().try_fold(1usize, |n, &d| {
            usize::try_from(d)
                .ok()
                .and_then(|d| n.checked_mul(d))
                .ok_or_else(|| format_err(format!("tensor {} has a bad shape {:?}", self.name, self.dims)))
        })
    }

    /// The values of a `FLOAT` tensor, row-major.
    ///
    /// # Errors
    /// [`Error::Embedder`] for another element type, or when the values do
    /// not fill the shape.
    pub(crate) fn floats(&self) -> Result<Vec<f32>> {
        if self.data_type != FLOAT {
            return Err(format_err(format!("{} has element type {}, expected FLOAT", self.name, self.data_type)));
        }
        let v: Vec<f32> = if self.raw_data.is_empty() {
            self.float_data.clone()
        } else {
            self.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        };
        self.check_len(v)
    }

    /// The values of a `UINT8`, `INT8` or `INT32` tensor as `i32`, row-major.
    ///
    /// # Errors
    /// [`Error::Embedder`] for another element type, or when the values do
    /// not fill the shape.
    pub(crate) fn integers(&self) -> Result<Vec<i32>> {
        let v: Vec<i32> = match (self.data_type, self.raw_data.is_empty()) {
            (UINT8 | INT8 | INT32, true) => self.int32_data.clone(),
            (UINT8, false) => self.raw_data.iter().map(|&b| i32::from(b)).collect(),
            (INT8, false) => self.raw_data.iter().map(|&b| i32::from(i8::from_le_bytes([b]))).collect(),
            (INT32, false) => {
                self.raw_data.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            (t, _) => {
                return Err(format_err(format!("{} has element type {t}, expected an 8- or 32-bit integer", self.name)))
            }
        };
        self.check_len(v)
    }

    fn check_len<T>(&self, v: Vec<T>) -> Result<Vec<T>> {
        let want = self.len()?;
        if v.len() != want {
            return Err(format_err(format!("{} holds {} values for shape {:?}", self.name, v.len(), self.dims)));
        }
        Ok(v)
    }
}

/// A linear layer's weight found in the graph, dequantised.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Linear {
    /// `out × in`, row-major (PyTorch's `Linear.weight` layout).
    pub weight: Vec<f32>,
    /// Output features.
    pub out: usize,
    /// Input features.
    pub inp: usize,
}

/// The decoded graph, with its initializers by name.
pub(crate) struct Graph {
    nodes: Vec<NodeProto>,
    initializers: HashMap<String, TensorProto>,
}

impl Graph {
    /// Decodes an ONNX model file.
    ///
    /// # Errors
    /// [`Error::Embedder`] when the bytes are not an ONNX model with a graph.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let model = <ModelProto as prost::Message>::decode(bytes)
            .map_err(|e| Error::Embedder(crate::error::Failure::with_source(format!("ONNX model: {e}"), e)))?;
        let graph = model.graph.ok_or_else(|| format_err("the file has no graph"))?;
        let initializers = graph.initializer.into_iter().map(|t| (t.name.clone(), t)).collect();
        Ok(Graph { nodes: graph.node, initializers })
    }

    /// The initializer called `name`.
    pub(crate) fn initializer(&self, name: &str) -> Option<&TensorProto> {
        self.initializers.get(name)
    }

    /// A `FLOAT` initializer's values.
    ///
    /// # Errors
    /// [`Error::Embedder`] when there is none of that name or it is not `FLOAT`.
    pub(crate) fn floats(&self, name: &str) -> Result<Vec<f32>> {
        self.initializer(name).ok_or_else(|| format_err(format!("no initializer {name}")))?.floats()
    }

    /// An embedding table `name` as `f32` values, row-major: the `FLOAT`
    /// initializer of that name, or else `{name}_quantized` (`UINT8` or
    /// `INT8`) dequantised with the scalar or per-element-broadcast
    /// `{name}_scale` and `{name}_zero_point` (`(q − zero point) · scale`,
    /// the `DequantizeLinear` the graph applies after its `Gather`). Also
    /// returns the table's shape.
    ///
    /// # Errors
    /// [`Error::Embedder`] when neither form is there or the parts do not
    /// fit together.
    pub(crate) fn table(&self, name: &str) -> Result<(Vec<f32>, Vec<i64>)> {
        if let Some(t) = self.initializer(name) {
            return Ok((t.floats()?, t.dims.clone()));
        }
        let q = self
            .initializer(&format!("{name}_quantized"))
            .ok_or_else(|| format_err(format!("no initializer {name} or {name}_quantized")))?;
        let scale = self.floats(&format!("{name}_scale"))?;
        let zero = match self.initializer(&format!("{name}_zero_point")) {
            Some(z) => z.integers()?,
            None => vec![0],
        };
        if scale.len() != 1 || zero.len() != 1 {
            return Err(format_err(format!("{name}: expected one scale and one zero point")));
        }
        let (s, z) = (scale[0], zero[0]);
        Ok((q.integers()?.into_iter().map(|v| (v - z) as f32 * s).collect(), q.dims.clone()))
    }

    /// Every linear layer whose product is followed by the `Add` of a
    /// named bias initializer, keyed by that bias's name, its weight
    /// dequantised (`(q − zero point) · scale`, per output column or for
    /// the whole matrix) and turned to `out × in`.
    ///
    /// # Errors
    /// [`Error::Embedder`] when a quantised product's parts (weight, zero
    /// point, scale) are missing or do not fit its shape, or two products
    /// feed the same bias.
    pub(crate) fn linear_layers(&self) -> Result<HashMap<String, Linear>> {
        let mut consumers: HashMap<&str, Vec<&NodeProto>> = HashMap::new();
        let mut producer: HashMap<&str, &NodeProto> = HashMap::new();
        for n in &self.nodes {
            for i in &n.input {
                consumers.entry(i.as_str()).or_default().push(n);
            }
            for o in &n.output {
                producer.insert(o.as_str(), n);
            }
        }
        let mut out = HashMap::new();
        for n in &self.nodes {
            let quantised = match n.op_type.as_str() {
                "MatMulInteger" => true,
                "MatMul" => false,
                _ => continue,
            };
            let Some(w) = n.input.get(1).and_then(|name| self.initializer(name)) else {
                continue; // a product of two activations (attention)
            };
            let Some((bias, scale_input)) = self.follow_to_bias(n, &consumers) else {
                continue;
            };
            let [inp, outs] = match w.dims.as_slice() {
                &[i, o] => [i, o].map(|d| usize::try_from(d).unwrap_or(0)),
                d => return Err(format_err(format!("{}: weight shape {d:?}, expected 2 dimensions", w.name))),
            };
            let values: Vec<f32> = if quantised {
                let q = w.integers()?;
                let zero = match n.input.get(3).filter(|z| !z.is_empty()) {
                    Some(z) => {
                        self.initializer(z).ok_or_else(|| format_err(format!("no zero point {z}")))?.integers()?
                    }
                    None => vec![0],
                };
                let scale = self.weight_scale(scale_input.as_deref(), &producer)?;
                dequantise(&q, &zero, &scale, outs).ok_or_else(|| {
                    format_err(format!("{}: zero point or scale does not fit shape {:?}", w.name, w.dims))
                })?
            } else {
                w.floats()?
            };
            let weight = transpose(&values, inp, outs);
            if out.insert(bias.clone(), Linear { weight, out: outs, inp }).is_some() {
                return Err(format_err(format!("two products feed {bias}")));
            }
        }
        Ok(out)
    }

    /// From a product node down its single-consumer chain of `Cast` and
    /// `Mul` to the `Add` of a bias initializer: that bias's name, and the
    /// other input of the first `Mul` (the rescaling of a quantised product).
    fn follow_to_bias(
        &self,
        start: &NodeProto,
        consumers: &HashMap<&str, Vec<&NodeProto>>,
    ) -> Option<(String, Option<String>)> {
        let mut value = start.output.first()?.as_str();
        let mut scale = None;
        for _ in 0..4 {
            let [next] = consumers.get(value)?.as_slice() else {
                return None;
            };
            let other = next.input.iter().find(|i| i.as_str() != value);
            match next.op_type.as_str() {
                "Cast" => {}
                "Mul" if scale.is_none() => scale = other.cloned(),
                "Add" => {
                    let bias = other?;
                    return self.initializer(bias).is_some().then(|| (bias.clone(), scale));
                }
                _ => return None,
            }
            value = next.output.first()?.as_str();
        }
        None
    }

    /// The weight scale of a quantised product from the input its result is
    /// multiplied by: a `FLOAT` initializer itself, or the output of a
    /// `Mul` of the activation scale with one.
    fn weight_scale(&self, input: Option<&str>, producer: &HashMap<&str, &NodeProto>) -> Result<Vec<f32>> {
        let input = input.ok_or_else(|| format_err("a quantised product is not rescaled"))?;
        if let Some(t) = self.initializer(input) {
            return t.floats();
        }
        let node = producer
            .get(input)
            .filter(|n| n.op_type == "Mul")
            .ok_or_else(|| format_err(format!("{input} is not a product of scales")))?;
        let name = node
            .input
            .iter()
            .find(|i| self.initializer(i).is_some_and(|t| t.data_type == FLOAT))
            .ok_or_else(|| format_err(format!("no weight scale among the inputs of {input}")))?;
        self.floats(name)
    }
}

/// `(q − zero) · scale` for `q` of `rows × cols` with `zero` and `scale` of
/// one value or one per column; `None` when their lengths fit neither.
fn dequantise(q: &[i32], zero: &[i32], scale: &[f32], cols: usize) -> Option<Vec<f32>> {
    let per_col = |n: usize| n == 1 || n == cols;
    if cols == 0 || !q.len().is_multiple_of(cols) || !per_col(zero.len()) || !per_col(scale.len()) {
        return None;
    }
    let at = |v: usize, c: usize| if v == 1 { 0 } else { c };
    Some(
        q.iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = i % cols;
                (v - zero[at(zero.len(), c)]) as f32 * scale[at(scale.len(), c)]
            })
            .collect(),
    )
}

/// `w` of `rows × cols` (row-major) as `cols × rows`.
fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0f32; w.len()];
    for (r, row) in w.chunks_exact(cols.max(1)).enumerate().take(rows) {
        for (c, &v) in row.iter().enumerate() {
            t[c * rows + r] = v;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
        NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            op_type: op.to_string(),
        }
    }

    fn tensor(name: &str, dims: &[i64], data_type: i32, raw: Vec<u8>) -> TensorProto {
        TensorProto { dims: dims.to_vec(), data_type, name: name.to_string(), raw_data: raw, ..Default::default() }
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A dynamically quantised product (`MatMulInteger`, `Cast`, scale
    /// `Mul`, bias `Add`) and a float one, as the export writes them, are
    /// found by their biases and dequantised to `out × in`.
    #[test]
    fn linear_layers_follow_products_to_their_biases() {
        // W (in 2 × out 3), int8, zero points per column, scales per column.
        let q: [i8; 6] = [1, -2, 3, 4, 5, -6];
        let graph = GraphProto {
            node: vec![
                node("DynamicQuantizeLinear", &["x"], &["xq", "xs", "xz"]),
                node("Mul", &["xs", "w_scale"], &["s"]),
                node("MatMulInteger", &["xq", "w_quantized", "xz", "w_zero_point"], &["p"]),
                node("Cast", &["p"], &["pf"]),
                node("Mul", &["pf", "s"], &["y"]),
                node("Add", &["layer.q.bias", "y"], &["z"]),
                node("MatMul", &["z", "f"], &["g"]),
                node("Add", &["g", "layer.f.bias"], &["h"]),
                node("MatMul", &["h", "z"], &["attention"]),
            ],
            initializer: vec![
                tensor("w_quantized", &[2, 3], INT8, q.iter().map(|&v| v.to_le_bytes()[0]).collect()),
                TensorProto {
                    dims: vec![3],
                    data_type: INT8,
                    int32_data: vec![0, 1, -1],
                    name: "w_zero_point".into(),
                    ..Default::default()
                },
                tensor("w_scale", &[3], FLOAT, f32s(&[0.5, 1.0, 2.0])),
                tensor("layer.q.bias", &[3], FLOAT, f32s(&[0.0; 3])),
                TensorProto {
                    dims: vec![3, 2],
                    data_type: FLOAT,
                    float_data: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                    name: "f".into(),
                    ..Default::default()
                },
                tensor("layer.f.bias", &[2], FLOAT, f32s(&[0.0; 2])),
            ],
        };
        let bytes = ModelProto { graph: Some(graph) }.encode_to_vec();
        let g = Graph::decode(&bytes).unwrap();
        let layers = g.linear_layers().unwrap();
        assert_eq!(layers.len(), 2, "{:?}", layers.keys().collect::<Vec<_>>());
        // Column c of W is output row c: (q − zp[c]) · scale[c].
        let q_layer = &layers["layer.q.bias"];
        assert_eq!((q_layer.out, q_layer.inp), (3, 2));
        assert_eq!(q_layer.weight, vec![0.5, 2.0, -3.0, 4.0, 8.0, -10.0]);
        let f_layer = &layers["layer.f.bias"];
        assert_eq!((f_layer.out, f_layer.inp), (2, 3));
        assert_eq!(f_layer.weight, vec![1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn tables_and_bad_tensors() {
        let graph = GraphProto {
            node: vec![],
            initializer: vec![
                tensor("t_quantized", &[2, 2], UINT8, vec![0, 128, 255, 130]),
                tensor("t_scale", &[], FLOAT, f32s(&[0.5])),
                tensor("t_zero_point", &[], UINT8, vec![128]),
                tensor("short", &[3], FLOAT, f32s(&[1.0])),
            ],
        };
        let g = Graph::decode(&ModelProto { graph: Some(graph) }.encode_to_vec()).unwrap();
        let (values, dims) = g.table("t").unwrap();
        assert_eq!((values, dims), (vec![-64.0, 0.0, 63.5, 1.0], vec![2, 2]));
        assert!(g.floats("short").unwrap_err().to_string().contains("1 values"));
        assert!(g.table("none").is_err());
        assert!(Graph::decode(b"\x3a\x02\x0a").is_err());
        assert!(Graph::decode(&ModelProto { graph: None }.encode_to_vec()).is_err());
    }

    #[test]
    fn dequantise_checks_lengths() {
        assert_eq!(dequantise(&[2, 4], &[1], &[0.5], 2), Some(vec![0.5, 1.5]));
        assert_eq!(dequantise(&[2, 4, 6], &[1], &[0.5], 2), None);
        assert_eq!(dequantise(&[2, 4], &[1, 1, 1], &[0.5], 2), None);
        assert_eq!(transpose(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }
}
