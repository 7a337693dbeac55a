"""A real OpenAI-compatible embedding server for tests and benchmarks:
llama.cpp's `llama-server` from the PyPI wheel `xllamacpp` (`serve.py`),
serving a sentence-transformers BERT model converted to GGUF
(`st2gguf.py`)."""
