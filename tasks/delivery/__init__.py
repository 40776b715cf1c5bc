"""Delivery: done transcripts filed into the patient record, exactly once per version.

What it holds:

    deliver.py      plan_deliveries / deliver_pending: plan a row per new version, claim
                    rows from the work queue, send, settle under the claim's token
    documents.py    one transcript as the document to send (txt or FHIR) and its query
    fhir.py         a transcript as a FHIR R4 DocumentReference; many as a Bundle
    fhir_export.py  `medasr export --format fhir`
    errors.py       errors of turning a transcript into a document
"""
