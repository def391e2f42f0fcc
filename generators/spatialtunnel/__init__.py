"""SpatialTunnel generator (see README.md): ``sampling`` (what to render, no Blender),
``scene`` (the Blender scene), ``generate`` (render + build steps, the CLI entry point)."""
