"""GitHub as the engine sees it: the REST/GraphQL client, its ETag cache and pacing."""
