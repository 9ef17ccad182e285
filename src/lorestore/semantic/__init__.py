"""Hybrid retrieval's semantic half (the optional extra ``lorestore[semantic]``): the local
embedding model (model.py) and the in-process index of stored vectors recall searches
(index.py). Nothing here is imported at CLI start: numpy and the model load when a write or a
recall first needs them."""
