"""Admission control names shared by every provider-bound definition (limits live in dagster.yaml)."""

# Ops that call the provider run in this pool; `concurrency.pools` in dagster.yaml caps it across runs.
PROVIDER_POOL = "provider_api"
# Runs that call the provider carry this tag; `tag_concurrency_limits` in dagster.yaml caps them.
PROVIDER_BOUND_TAG = "recon/provider_bound"
