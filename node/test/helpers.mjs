// Shared by the tests: temporary stores and the package under test (dist/).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh empty directory for a store; removed when the process exits. */
export function tempDir(name = "mnemon-node-") {
  const dir = mkdtempSync(join(tmpdir(), name));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A directory path for a new store (not yet created). */
export function storePath(name = "store") {
  return join(tempDir(), name);
}
