"""Stand-in of torch_geometric.loader.base.DataLoaderIterator: a DataLoader's iterator whose
items pass through a function in the main process."""


class DataLoaderIterator:
    def __init__(self, iterator, transform_fn):
        self.iterator = iterator
        self.transform_fn = transform_fn

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.iterator)

    def __next__(self):
        return self.transform_fn(next(self.iterator))
