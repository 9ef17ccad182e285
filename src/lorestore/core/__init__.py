"""Pure domain: scope grammar, validation, normalisation, records and errors. No I/O here."""
