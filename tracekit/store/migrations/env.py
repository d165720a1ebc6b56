"""Alembic environment: runs on the connection that `tracekit.store.engine.migrate` passes in."""

from alembic import context

from tracekit.store import schema

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=schema.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
