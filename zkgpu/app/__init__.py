"""zkgpu.app: see ARCHITECTURE.md."""
