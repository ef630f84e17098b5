"""Benchmark runners and their click commands (app layer): each module measures one concern and writes a recording with its manifest."""
