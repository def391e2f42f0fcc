"""DORI generators: Blender renders and image transforms."""
