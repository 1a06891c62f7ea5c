; Java tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
[
  (class_declaration name: (identifier) @name.definition.class)
  (record_declaration name: (identifier) @name.definition.class)
]

[
  (interface_declaration name: (identifier) @name.definition.interface)
  (annotation_type_declaration name: (identifier) @name.definition.interface)
]

(enum_declaration
  name: (identifier) @name.definition.enum)

(method_declaration
  name: (identifier) @name.definition.method)

(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator
    name: (identifier) @name.definition.constant))

; ---- references
(method_invocation
  name: (identifier) @name.reference.call)

(object_creation_expression
  type: [
    (type_identifier) @name.reference.class
    (generic_type (type_identifier) @name.reference.class)
    (scoped_type_identifier (type_identifier) @name.reference.class .)
  ])

(type_identifier) @name.reference.type

(marker_annotation
  name: (identifier) @name.reference.type)

(annotation
  name: (identifier) @name.reference.type)

; ---- imports: the dotted path, `.*` kept for wildcards
(import_declaration
  [(scoped_identifier) (identifier)] @import)
