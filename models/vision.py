"""The paper's vision workloads (Figs. 10–12): Nature-DQN, MobileNet v1, ResNet-18 and VGG-16.

Each is first-order dataflow in NCHW/OIHW layout, written as ``@main(%data, <weights>...)`` in graph
form; the output is the classifier's logits (no softmax), as torchvision's models return them.
Batch norm is inference-mode ``nn.batch_norm`` with seeded moving statistics.

* ``dqn``: Mnih et al. 2015 (Nature) — input ``(batch, 4, 84, 84)`` (four stacked 84×84 frames),
  conv 32@8×8/4, 64@4×4/2, 64@3×3/1 (each with bias and relu), dense 512, dense 18 (the full Atari
  action set, as TVM's ``relay.testing.dqn``).
* ``mobilenet``: Howard et al. 2017, width 1.0 — input ``(batch, 3, 224, 224)``; a 3×3/2 stem, 13
  depthwise-separable blocks (depthwise 3×3 via ``groups``, pointwise 1×1, each followed by batch
  norm and relu), global average pool, dense 1000.
* ``resnet18``: He et al. 2016 (v1, basic blocks) — input ``(batch, 3, 224, 224)``; 7×7/2 stem with
  batch norm, 3×3/2 max pool, four stages of two basic blocks (64, 128, 256, 512 channels; 1×1
  projection shortcut with batch norm where the shape changes), global average pool, dense 1000.
* ``vgg16``: Simonyan & Zisserman 2015, configuration D — input ``(batch, 3, 224, 224)``; thirteen
  3×3 convolutions with bias and relu in five stages with 2×2/2 max pooling, then dense 4096, 4096
  (relu; dropout is the identity at inference and is omitted) and 1000.
"""

from __future__ import annotations

from models._builder import Net, tensor_type


def dqn(batch: int, seed: int) -> tuple[str, dict]:
    """Nature-DQN; returns (module text, weights)."""
    n = Net(seed)
    x = "%data"
    x = n.relu(n.conv2d("conv1", x, 4, 32, 8, stride=4, bias=True))
    x = n.relu(n.conv2d("conv2", x, 32, 64, 4, stride=2, bias=True))
    x = n.relu(n.conv2d("conv3", x, 64, 64, 3, stride=1, bias=True))
    x = n.let(f"nn.batch_flatten({x})")
    x = n.relu(n.dense("fc1", x, 64 * 7 * 7, 512))
    x = n.dense("fc2", x, 512, 18)
    return n.main([("data", tensor_type((batch, 4, 84, 84)))], x,
                  tensor_type((batch, 18))), n.params


MOBILENET_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1),
                    (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def mobilenet(batch: int, seed: int) -> tuple[str, dict]:
    """MobileNet v1 (width 1.0, 224×224); returns (module text, weights)."""
    n = Net(seed)
    x = n.relu(n.batch_norm("bn0", n.conv2d("conv0", "%data", 3, 32, 3, stride=2, pad=1), 32))
    cin = 32
    for i, (cout, stride) in enumerate(MOBILENET_BLOCKS, start=1):
        x = n.conv2d(f"dw{i}", x, cin, cin, 3, stride=stride, pad=1, groups=cin)
        x = n.relu(n.batch_norm(f"dw{i}_bn", x, cin))
        x = n.relu(n.batch_norm(f"pw{i}_bn", n.conv2d(f"pw{i}", x, cin, cout, 1), cout))
        cin = cout
    x = n.let(f"nn.batch_flatten(nn.global_avg_pool2d({x}))")
    x = n.dense("fc", x, 1024, 1000)
    return n.main([("data", tensor_type((batch, 3, 224, 224)))], x,
                  tensor_type((batch, 1000))), n.params


def resnet18(batch: int, seed: int) -> tuple[str, dict]:
    """ResNet-18 (v1); returns (module text, weights)."""
    n = Net(seed)
    x = n.relu(n.batch_norm("bn1", n.conv2d("conv1", "%data", 3, 64, 7, stride=2, pad=3), 64))
    x = n.max_pool(x, 3, 2, 1)
    cin = 64
    for stage, (cout, stride) in enumerate(((64, 1), (128, 2), (256, 2), (512, 2)), start=1):
        for block in range(2):
            p = f"layer{stage}_{block}"
            s = stride if block == 0 else 1
            y = n.relu(n.batch_norm(f"{p}_bn1", n.conv2d(f"{p}_conv1", x, cin, cout, 3, s, 1),
                                    cout))
            y = n.batch_norm(f"{p}_bn2", n.conv2d(f"{p}_conv2", y, cout, cout, 3, 1, 1), cout)
            if s != 1 or cin != cout:
                x = n.batch_norm(f"{p}_down_bn", n.conv2d(f"{p}_down", x, cin, cout, 1, s), cout)
            x = n.relu(n.let(f"add({y}, {x})"))
            cin = cout
    x = n.let(f"nn.batch_flatten(nn.global_avg_pool2d({x}))")
    x = n.dense("fc", x, 512, 1000)
    return n.main([("data", tensor_type((batch, 3, 224, 224)))], x,
                  tensor_type((batch, 1000))), n.params


VGG16_STAGES = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))


def vgg16(batch: int, seed: int) -> tuple[str, dict]:
    """VGG-16 (configuration D); returns (module text, weights)."""
    n = Net(seed)
    x, cin = "%data", 3
    for s, stage in enumerate(VGG16_STAGES, start=1):
        for i, cout in enumerate(stage, start=1):
            x = n.relu(n.conv2d(f"conv{s}_{i}", x, cin, cout, 3, pad=1, bias=True))
            cin = cout
        x = n.max_pool(x, 2, 2)
    x = n.let(f"nn.batch_flatten({x})")
    x = n.relu(n.dense("fc6", x, 512 * 7 * 7, 4096))
    x = n.relu(n.dense("fc7", x, 4096, 4096))
    x = n.dense("fc8", x, 4096, 1000)
    return n.main([("data", tensor_type((batch, 3, 224, 224)))], x,
                  tensor_type((batch, 1000))), n.params
