"""Images to graphs: superpixels, their descriptors and pairwise features,
extraction in parallel, and the feature cache."""
