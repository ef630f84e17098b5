"""zkgpu.analysis: see ARCHITECTURE.md."""
