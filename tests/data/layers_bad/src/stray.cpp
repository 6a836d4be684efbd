// Not in a layer folder.
