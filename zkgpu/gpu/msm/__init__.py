"""zkgpu.gpu.msm: see ARCHITECTURE.md."""
