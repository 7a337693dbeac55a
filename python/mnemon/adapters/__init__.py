"""Memory for agent frameworks, on a mnemon `Engine`.

Each module wraps one framework's memory interface and imports that
framework only when it is itself imported; `import mnemon` and
`import mnemon.adapters` need none of them.

* `mnemon.adapters.openai_agents.MnemonSession`: an OpenAI Agents SDK
  `Session` (conversation history of `Runner.run(..., session=...)`).
* `mnemon.adapters.llama_index.MnemonMemoryBlock`: a LlamaIndex memory
  block for `llama_index.core.memory.Memory(memory_blocks=[...])`.
* `mnemon.adapters.adk.MnemonMemoryService`: a Google ADK
  `BaseMemoryService` (`Runner(memory_service=...)`).
* `mnemon.adapters.crewai.MnemonStorage`: a CrewAI `StorageBackend` for
  `crewai.memory.Memory(storage=...)`.

How ids map, the same rule in every adapter (and in `mnemon.langgraph`):

* the framework's user (with its app, for ADK) is one mnemon namespace,
  `<prefix>:<id>[:<id>...]`, each id escaped as the LangGraph store
  escapes labels (characters outside `[A-Za-z0-9_-]` as `@XX` per UTF-8
  byte), or `<prefix>:@@<digest>` (SHA-256, in the letters a–p) when that
  is over 128 characters or the adapter is given `opaque_ids=True` (for
  ids holding personal data, which the engine refuses in names); the
  prefix names the framework by default (`oa`, `li`, `adk`, `crewai`), so
  adapters sharing an engine do not see each other's memories unless
  given one prefix;
* the framework's session (thread, conversation) is a mnemon session: its
  id escaped the same way, or `@@<digest>`;
* a conversation turn is an observation of that session (role, text, the
  framework's message id as its source), and, for text a later recall
  should find, also a memory derived from it (kind `episode`), so
  forgetting the turn forgets the memory with it.

See `docs/guide/frameworks.md` for usage and what each adapter cannot
carry.
"""

from __future__ import annotations

from .._ids import escape_label, namespace_for, session_for

__all__ = ["escape_label", "namespace_for", "session_for"]
