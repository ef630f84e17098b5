"""zkgpu.gpu: see ARCHITECTURE.md."""
