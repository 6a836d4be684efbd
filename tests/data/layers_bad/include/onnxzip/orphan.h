// Public and not in the layer table.
