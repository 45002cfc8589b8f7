#!/usr/bin/env bash
# Starts local PostgreSQL and Redis for development (from Debian's binaries; no Docker needed).
# Prints DATABASE_URL and REDIS_URL, and runs until Ctrl-C.   Usage: npm run services
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx scripts/services.ts
