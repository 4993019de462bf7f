// expect: ok
// options: --size N=8 --inputs {inputs}
// inputs: {"A": ["int32", [8]]}
void f(int N, int A[N], int B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = 3 * A[i];
}
