#!/usr/bin/env python3
"""Start llama.cpp's native HTTP server (llama-server, embedded in the PyPI
wheel `xllamacpp`) for a GGUF embedding model, and block until SIGTERM/SIGINT.

usage: serve.py MODEL.gguf PORT [--pooling mean|cls|rank]
                          [--alias NAME] [--threads N] [--host 127.0.0.1]

xllamacpp has no CLI; this is the whole launcher.  All HTTP handling
(/health, /v1/embeddings, /embeddings, /v1/rerank, /v1/models, error JSON) is
llama.cpp's own server code.
"""
import argparse
import signal
import sys
import time

import xllamacpp as xlc

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("port", type=int)
ap.add_argument("--pooling", default="mean", choices=["mean", "cls", "last", "rank"])
ap.add_argument("--alias", default=None)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--ctx", type=int, default=512, help="max tokens per input (BERT: 512)")
ap.add_argument("--parallel", type=int, default=1, help="slots = inputs embedded together")
a = ap.parse_args()

p = xlc.CommonParams()
p.model.path = a.model
if a.alias:
    p.model_alias = {a.alias}
p.embedding = True
p.pooling_type = getattr(xlc.llama_pooling_type, "LLAMA_POOLING_TYPE_" + a.pooling.upper())
p.hostnames = [a.host]
p.port = a.port
# `parallel` slots of `ctx` tokens each; for embeddings a whole input must fit
# one micro-batch, and non-causal models need n_ubatch == n_batch
p.n_parallel = a.parallel
p.n_ctx = a.ctx * a.parallel
# (batch > ctx so that an over-long input gets a 400 exceed_context_size_error
# instead of a 500 "increase the physical batch size")
p.n_batch = a.ctx * max(a.parallel, 2)
p.n_ubatch = a.ctx * max(a.parallel, 2)
p.cpuparams.n_threads = a.threads
p.cpuparams_batch.n_threads = a.threads

# block the signals first so sigwait() below receives them
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
t0 = time.time()
server = xlc.Server(p)  # loads the model and starts the HTTP listener
print(f"serve.py: listening on {server.listening_address} "
      f"(model loaded in {time.time() - t0:.2f}s)", file=sys.stderr, flush=True)
sig = signal.sigwait({signal.SIGTERM, signal.SIGINT})
print(f"serve.py: got signal {sig}, exiting", file=sys.stderr, flush=True)
del server
sys.exit(0)
