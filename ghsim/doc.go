// Package ghsim is an in-memory GitHub for ralph-gate's tests, demo and benchmarks: REST under
// /api/v3/, GraphQL at /api/graphql (every document validated against GitHub's published schema),
// signed webhooks delivered to the app, injectable faults, and inspection under /_sim/. It models
// exactly the surface ralph-gate uses and fails loudly on anything else. See README.md.
//
// ghsim depends on no other package of this module, so any of them may use it in tests.
package ghsim
