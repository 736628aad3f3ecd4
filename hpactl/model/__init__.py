"""Pure data model: quantities, selectors, times, conversions, HPA views."""
