"""The retrieval eval of ``evals/`` (``lorestore eval``, docs/evals.md): the data set
(``cases``), loading it and running its queries through the real handlers (``runner``), and
the figures and tables made of the outcomes (``report``)."""
