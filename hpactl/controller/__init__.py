"""The controller: per-HPA schedules around the sync that gathers, decides and writes."""
