"""zkgpu.story: see ARCHITECTURE.md."""
