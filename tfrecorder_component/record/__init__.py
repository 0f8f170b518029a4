"""A manifest row's record: the `tf.train.Example` built from a row and its image
(`example`), its message classes without TensorFlow (`example_proto`), the label
vocabulary that travels with the data (`labels`) and the split a row lands in (`splits`).
Below the steps and the engines; knows nothing of files being written."""
