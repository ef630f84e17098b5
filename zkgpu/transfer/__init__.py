"""zkgpu.transfer.paths: see ARCHITECTURE.md."""
