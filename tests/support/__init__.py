"""What several test modules share: servers, documents, datasets, strategies, agents (not tests)."""
