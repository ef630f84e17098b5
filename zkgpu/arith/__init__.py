"""zkgpu.arith: see ARCHITECTURE.md."""
