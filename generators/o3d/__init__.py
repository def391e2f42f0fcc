"""O3-D generator: odd-one-out depth scenes with controlled pictorial cues (Blender), official layout."""
