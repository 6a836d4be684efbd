// Public, of the base layer.
