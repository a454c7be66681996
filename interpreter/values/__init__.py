"""The values templates compute with, and their marks: marked strings, safe markup,
numbers from input, undefined, methods and formatting, the runtime's own objects
(loops, macros, namespaces), how attributes and items are read, and the sandbox's
rules for host objects. Nothing here knows the evaluator."""
