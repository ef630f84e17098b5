"""zkgpu.core: see ARCHITECTURE.md."""
