"""The demo's model (configs/demo_built.yaml model.build) as an HF transformers Llama, initialised
as citeforge initialises a built model: N(0, 0.02) weights, norms at 1. Shared by the Python
references (copy_drill_reference.py, reading_reference.py) so they train the same model."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB, BOS, EOS = 1024, 1, 2


def demo_llama(max_positions, attn_implementation):
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=344,
                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=max_positions, rope_theta=10000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=BOS,
                         eos_token_id=EOS, attn_implementation=attn_implementation)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    return model
