"""The names the budget benchmarks give the attention encoder's presets."""

from benchmarks.encoders import attention_preset


def test_preset_names_say_what_differs_from_two_blocks():
    name, preset = attention_preset({"num_layers": 2})
    assert name == "attention, cycle"
    assert preset["encoder"] == "attention" and preset["num_layers"] == 2
    one, _ = attention_preset({"num_layers": 1, "learning_rate_decay": 0.8})
    three, preset = attention_preset({"num_layers": 3, "dtype_policy": "mixed_bfloat16"})
    assert one == "attention, cycle, 1 block, decay 0.8"
    assert three == "attention, cycle, 3 blocks, mixed_bfloat16"
    assert preset["num_layers"] == 3 and preset["dtype_policy"] == "mixed_bfloat16"
