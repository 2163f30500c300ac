"""The ``nn`` and ``transform`` operator families' call strategies, one concept per module.

The entry point is :mod:`conformance.strategies.ops_nn`, which imports the registering
modules here (so that :func:`conformance.strategies.ops.load_extensions` registers every
strategy exactly once) and re-exports their public names. Importing this package alone
registers nothing.

* :mod:`.common` — dtype groups, shape/dtype constructors, generic invalid-call makers;
* :mod:`.inputs` — fast argument arrays (:func:`~.inputs.call_inputs`), ``take``'s inputs;
* :mod:`.nn_layers` — activations, softmax, dense, bias_add, batch_norm, dropout,
  batch_flatten;
* :mod:`.nn_spatial` — conv2d, pools, global pools, pad;
* :mod:`.transform_reshape` — reshape, reshape_like, transpose, expand_dims, squeeze,
  concatenate, stack, split;
* :mod:`.transform_slice` — take, strided_slice, tile, repeat, reverse, broadcasts,
  shape_of, layout_transform.
"""
