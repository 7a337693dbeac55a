//! How an embedder's cosines are read: the scaling hybrid recall applies
//! to them ([`SimilarityNorm`]) and the floors under which recall abstains
//! ([`Abstain`]). Each [`Embedder`](super::Embedder) states its own,
//! measured for its model; recall applies them (`crate::recall`).

/// How hybrid recall scales cosine similarity before the weighted sum (see
/// the module docs for the formula and the measurements behind it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SimilarityNorm {
    /// Whatever the engine's embedder asks for
    /// ([`super::Embedder::similarity_norm`]): raw cosine for
    /// all-MiniLM-L6-v2 and the hashing embedder, min-max for
    /// multilingual-e5-small and bge-small-en-v1.5.
    #[default]
    Auto,
    /// Cosine as it is, `-1..=1`.
    Raw,
    /// Cosine min-max scaled over this recall's candidates to `0..=1`
    /// (all 1 when every candidate has the same cosine); under
    /// `crate::recall::FEW_CANDIDATES` candidates, a spread under
    /// `crate::recall::MIN_SPREAD` counts as that spread.
    #[serde(alias = "minmax")]
    MinMax,
}

impl std::str::FromStr for SimilarityNorm {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "auto" => Ok(SimilarityNorm::Auto),
            "raw" => Ok(SimilarityNorm::Raw),
            "minmax" | "min-max" => Ok(SimilarityNorm::MinMax),
            _ => Err(crate::Error::invalid("similarity_norm", format!("must be auto, raw or minmax, got {s:?}"))),
        }
    }
}

/// When recall abstains: returns no hit because nothing stored is relevant
/// enough ([`crate::RecallOptions::abstain`]). Both floors are query-to-memory
/// cosines in `-1.0..=1.0` (`-1` turns a rule off); their scale depends on
/// the embedder ([`super::Embedder::context_floor`] gives calibrated
/// values).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Abstain {
    /// Abstain when no hit has a cosine of at least this.
    pub below: f32,
    /// Abstain when the query names something no memory of the namespace
    /// mentions ([`crate::Engine::unknown_names`]) and no hit has a cosine of at
    /// least this. Meant to be above `below`: a question about a stranger
    /// must match more closely to count.
    pub unknown_name_below: f32,
}

impl Abstain {
    /// Never abstains.
    pub const NEVER: Abstain = Abstain { below: -1.0, unknown_name_below: -1.0 };

    /// `floors` moved to a base floor of `below`, keeping their margin for
    /// unknown names (`unknown_name_below − below`, at least 0; the result
    /// at most 1): what one number (`abstain_below` at the command surface)
    /// sets. `below` ≤ -1 gives [`Abstain::NEVER`].
    pub fn shifted(floors: Abstain, below: f32) -> Abstain {
        if below <= -1.0 {
            return Abstain::NEVER;
        }
        let margin = (floors.unknown_name_below - floors.below).max(0.0);
        Abstain { below, unknown_name_below: (below + margin).min(1.0) }
    }
}

/// One model's measured calibration: what its [`super::Embedder`] methods
/// return, kept in one place so that the same model served by a remote
/// provider ([`super::provider`]) gets the same values. The measurements
/// behind each value are documented on the model's trait methods
/// (`minilm.rs`, `e5/mod.rs`, `bge/mod.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Measured {
    /// [`super::Embedder::similarity_norm`].
    pub(crate) norm: SimilarityNorm,
    /// [`super::Embedder::cross_script_offset`] for a CJK query (0 for others).
    pub(crate) cross_script_cjk: f32,
    /// [`super::Embedder::near_duplicate_threshold`], a cosine.
    pub(crate) near_duplicate: f32,
    /// [`super::Embedder::relevance_floor`], a cosine.
    pub(crate) relevance_floor: f32,
    /// [`super::Embedder::context_floor`].
    pub(crate) abstain: Abstain,
}

/// all-MiniLM-L6-v2: raw cosine, the trait's near-duplicate threshold and
/// relevance floor, abstention floors 0.32 / 0.50.
pub(crate) const MINILM: Measured = Measured {
    norm: SimilarityNorm::Raw,
    cross_script_cjk: 0.0,
    near_duplicate: 0.92,
    relevance_floor: 0.5,
    abstain: Abstain { below: 0.32, unknown_name_below: 0.50 },
};

/// multilingual-e5-small: min-max fusion, cross-script offset 0.10,
/// near-duplicate 0.95, relevance floor 0.92, abstention 0.80 / 0.85.
pub(crate) const E5_SMALL: Measured = Measured {
    norm: SimilarityNorm::MinMax,
    cross_script_cjk: 0.10,
    near_duplicate: 0.95,
    relevance_floor: 0.92,
    abstain: Abstain { below: 0.80, unknown_name_below: 0.85 },
};

/// bge-small-en-v1.5: min-max fusion, near-duplicate 0.95, relevance floor
/// 0.70, abstention 0.57 / 0.65.
pub(crate) const BGE_SMALL_EN: Measured = Measured {
    norm: SimilarityNorm::MinMax,
    cross_script_cjk: 0.0,
    near_duplicate: 0.95,
    relevance_floor: 0.70,
    abstain: Abstain { below: 0.57, unknown_name_below: 0.65 },
};
