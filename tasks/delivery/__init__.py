"""Delivery: done transcripts filed into the patient record, exactly once per version.

What it holds:

    deliverer.py    plan_deliveries / deliver_pending: plan a row per new version, claim
                    rows from the work queue, mark sending, send, settle under the
                    claim's token; unanswered sends become in_doubt (DocumentSender's
                    `dedupes` lets a deduplicating target resend them itself)
    plan.py         one plan for the real run and the dry run (which rolls it back)
    identity.py     whose note: MSH-10, TXA-12, masterIdentifier from the store identity
    targets.py      what --to names (canonical per spelling); target_aliases.py refuses
                    a new name for an address delivered to; senders.py sends to each
    stats.py        a delivery run's counts and summary (exit code: config.errors)
    document_sender.py  DocumentSender (the hook for targets, `dedupes`), the receiver's id
    documents.py    one transcript as the document to send (txt or FHIR) and its query
    fhir_documents.py  a transcript as a FHIR R4 DocumentReference; many as a Bundle
    fhir_export.py  `medasr export --format fhir`
    errors.py       errors of turning a transcript into a document
"""
