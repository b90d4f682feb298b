import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';

// The table's change stream, decoded: which item changed, in what order, and its images as plain
// records (the stream carries DynamoDB's attribute-value format).

type Image = Record<string, AttributeValue> | undefined;

export interface TableChange {
  /** The `entity` attribute of the new image, else of the old one (a delete). */
  entity: string | undefined;
  /** The item's key: changes of one item are applied in stream order. */
  item: string;
  /** The stream sequence number: the position to resume from after a failure. */
  sequence: string;
  /** Unique per change; ids derived from it make a replayed change harmless. */
  eventId: string;
  timeMs: number;
  old: Record<string, unknown> | undefined;
  new: Record<string, unknown> | undefined;
}

const entityOf = (image: Image) => image?.entity?.S;
const read = (image: Image) => (image ? unmarshall(image) : undefined);

export function decodeRecord(record: DynamoDBRecord): TableChange {
  const oldImage = record.dynamodb?.OldImage as Image;
  const newImage = record.dynamodb?.NewImage as Image;
  return {
    entity: entityOf(newImage) ?? entityOf(oldImage),
    item: `${record.dynamodb?.Keys?.pk?.S}\u0000${record.dynamodb?.Keys?.sk?.S}`,
    sequence: record.dynamodb?.SequenceNumber ?? '',
    eventId: record.eventID ?? record.dynamodb?.SequenceNumber ?? '',
    timeMs: (record.dynamodb?.ApproximateCreationDateTime ?? Date.now() / 1000) * 1000,
    old: read(oldImage),
    new: read(newImage),
  };
}
