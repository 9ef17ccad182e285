"""GitHub capture: review comments on pull requests become candidate lessons (docs/webhook.md).

``keys`` holds the webhook secrets' encryption and the delivery signature; ``events`` reads a
delivery (admitted or ignored, and why); ``signal`` is the deterministic filter of what is worth
keeping. The service (``service/webhooks.py``, ``service/capture.py``) applies them."""
