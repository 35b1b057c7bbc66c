"""The error type shared by every component (a neutral module: the trusted core, the producer and
the front ends all import it from here; it imports nothing).

``InputError`` is malformed input (a file or field that cannot be read as documented); the
command line prints it as one line and exits with code 2.  A *rejection* (a well-formed
certificate whose inequality fails or cannot be certified) is not an error: checkers return it
as a verdict, with an error type naming the lemma (see ``softrank.validated.outcome``).
"""


class InputError(Exception):
    """Malformed input: names the file (or record) and the field."""

    def __init__(self, where: str, field: str, message: str):
        self.where = str(where)
        self.field = str(field)
        self.message = str(message)
        super().__init__(self.one_line())

    def one_line(self) -> str:
        field = f" field '{self.field}'" if self.field else ""
        return f"{self.where}:{field} {self.message}".replace("\n", " ")
