; Python tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import.
; A name captured under several kinds keeps the most specific (parse.py's _KIND_ORDER).

; ---- definitions
(class_definition
  name: (identifier) @name.definition.class)

(function_definition
  name: (identifier) @name.definition.function)

(class_definition
  body: (block
    (function_definition
      name: (identifier) @name.definition.method)))

(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition
        name: (identifier) @name.definition.method))))

(module
  (expression_statement
    (assignment
      left: (identifier) @name.definition.constant))
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

(module
  (expression_statement
    (assignment
      left: (identifier) @name.definition.variable))
  (#not-match? @name.definition.variable "^__"))

(type_alias_statement
  left: (type
    (identifier) @name.definition.type))

; ---- references
(call
  function: [
    (identifier) @name.reference.call
    (attribute
      attribute: (identifier) @name.reference.call)
  ])

(class_definition
  superclasses: (argument_list
    [
      (identifier) @name.reference.class
      (attribute
        attribute: (identifier) @name.reference.class)
    ]))

(decorator
  [
    (identifier) @name.reference.call
    (attribute
      attribute: (identifier) @name.reference.call)
  ])

(type
  [
    (identifier) @name.reference.type
    (attribute
      attribute: (identifier) @name.reference.type)
  ])

(generic_type
  (identifier) @name.reference.type)

; ---- imports: `import a.b` -> a.b; `from .m import n` -> .m; `from . import y` -> .y
(import_statement
  name: [
    (dotted_name) @import
    (aliased_import
      name: (dotted_name) @import)
  ])

(import_from_statement
  module_name: [
    (dotted_name)
    (relative_import)
  ] @import)
