; Rust tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import, @import.mod.

; ---- definitions
(struct_item
  name: (type_identifier) @name.definition.struct)

(union_item
  name: (type_identifier) @name.definition.struct)

(enum_item
  name: (type_identifier) @name.definition.enum)

(type_item
  name: (type_identifier) @name.definition.type)

(trait_item
  name: (type_identifier) @name.definition.trait)

(function_item
  name: (identifier) @name.definition.function)

([
  (impl_item body: (declaration_list (function_item name: (identifier) @name.definition.method)))
  (trait_item
    body: (declaration_list
      [
        (function_item name: (identifier) @name.definition.method)
        (function_signature_item name: (identifier) @name.definition.method)
      ]))
])

(mod_item
  name: (identifier) @name.definition.module)

(macro_definition
  name: (identifier) @name.definition.function)

[
  (const_item name: (identifier) @name.definition.constant)
  (static_item name: (identifier) @name.definition.constant)
]

; ---- references
(call_expression
  function: [
    (identifier) @name.reference.call
    (field_expression field: (field_identifier) @name.reference.call)
    (scoped_identifier name: (identifier) @name.reference.call)
    (generic_function function: (identifier) @name.reference.call)
    (generic_function function: (scoped_identifier name: (identifier) @name.reference.call))
  ])

(macro_invocation
  macro: [
    (identifier) @name.reference.call
    (scoped_identifier name: (identifier) @name.reference.call)
  ])

(type_identifier) @name.reference.type

(scoped_type_identifier
  name: (type_identifier) @name.reference.type)

(struct_expression
  name: [
    (type_identifier) @name.reference.class
    (scoped_type_identifier name: (type_identifier) @name.reference.class)
  ])

; ---- imports: use trees (expanded in parse.py), `mod foo;` file declarations, extern crates
(use_declaration
  argument: (_) @import)

(mod_item
  name: (identifier) @import.mod
  !body)

(extern_crate_declaration
  name: (identifier) @import)
