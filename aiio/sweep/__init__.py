"""Client-count sweeps (`aiio scale`), the largest count keeping the AU goal, the verdict."""
