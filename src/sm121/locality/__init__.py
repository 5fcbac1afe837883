"""Prefix locality: where two consecutive prompts of a session diverge, at the token level
(the server's own tokenizer and chat template) and at the engine's block size. A divergence
in the first cache block means nothing of the previous prompt can be reused.
"""
