"""zkgpu: investigating GPU bottlenecks in zero-knowledge provers.

Modules (one concept each): ``field`` (BLS12-381 Fr/Fq), ``ntt``, ``curve``, ``msm``,
``transfer`` (H2D paths, PinnedPool), ``pipeline`` (cuzk-like two-worker prover), ``trace``
(NVTX + cuzk-format logs + event table), ``logs`` (parsers), ``metrics``, ``plots``, ``model``
(simpy what-if), ``record``, ``report``, ``cli``. Kernels are CUDA sources in ``zkgpu/kernels``.
"""

__version__ = "0.1.0"
