// The compiled half of the package: the addon built from node/rust/ (crate
// `mnemon-node`), loaded from native/mnemon.<platform>-<arch>-gnu.node.

import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The addon's engine handle (node/rust/engine.rs). Use {@link Engine} from the package. */
export interface NativeEngine {
  call(op: string, args: string): Promise<string>;
  embed(texts: string[], query: boolean): Promise<number[][]>;
  close(): Promise<void>;
  readonly closed: boolean;
  readonly notice: string | null;
  readonly modelId: string;
  readonly dim: number;
  readonly path: string;
  readonly maxContentBytes: number;
  readonly maxResponseTokens: number;
}

/** The addon's module functions (node/rust/lib.rs). */
export interface Native {
  open(
    path: string,
    options: string,
    embed?: ((request: [id: number, texts: string[], query: boolean]) => void) | null,
  ): Promise<NativeEngine>;
  schemas(): string;
  ops(): string[];
  checkNamespace(name: string): void;
  version(): string;
  defaultMaxContentBytes(): number;
  defaultMaxResponseTokens(): number;
  embedReply(id: number, error: string | null, vectors: Float64Array | null): void;
}

function load(): Native {
  const require = createRequire(import.meta.url);
  const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "native");
  const file = join(dir, `mnemon.${process.platform}-${process.arch}-gnu.node`);
  return require(file) as Native;
}

/** The loaded addon. */
export const native: Native = load();
