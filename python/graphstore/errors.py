"""Errors raised by graphstore."""


class GraphstoreError(RuntimeError):
    """A graphstore call failed: a server answered with an error, or a server could not be reached.

    Attributes:
        code: the canonical gRPC status code's name, e.g. ``"INVALID_ARGUMENT"``,
            ``"NOT_FOUND"``, ``"UNAVAILABLE"`` (the names of ``grpc.StatusCode``).
        code_value: the same code as its number (``grpc.StatusCode.X.value[0]``).
        message: the server's message, naming the field or object at fault.
    """

    def __init__(self, code, code_value, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.code_value = code_value
        self.message = message

    def __reduce__(self):
        return (type(self), (self.code, self.code_value, self.message))
