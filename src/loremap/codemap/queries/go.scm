; Go tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
(function_declaration
  name: (identifier) @name.definition.function)

(method_declaration
  name: (field_identifier) @name.definition.method)

(type_spec
  name: (type_identifier) @name.definition.type)

(type_alias
  name: (type_identifier) @name.definition.type)

(type_spec
  name: (type_identifier) @name.definition.struct
  type: (struct_type))

(type_spec
  name: (type_identifier) @name.definition.interface
  type: (interface_type))

(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name.definition.constant)))

(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name.definition.variable)))

; ---- references
(call_expression
  function: [
    (identifier) @name.reference.call
    (selector_expression field: (field_identifier) @name.reference.call)
    (parenthesized_expression (identifier) @name.reference.call)
  ])

(type_identifier) @name.reference.type

(qualified_type
  name: (type_identifier) @name.reference.type)

; ---- imports: the path string
(import_spec
  path: (_) @import)
