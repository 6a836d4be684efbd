// A private header of the io layer.
