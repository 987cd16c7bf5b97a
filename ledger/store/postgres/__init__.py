"""The PostgreSQL engine (the `postgres` extra): the same store on a server."""
