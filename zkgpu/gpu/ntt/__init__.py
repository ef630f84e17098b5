"""zkgpu.gpu.ntt: see ARCHITECTURE.md."""
