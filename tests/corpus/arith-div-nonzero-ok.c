// expect: ok
// options: --size N=8,M=3
void f(int N, int M, int A[N], int B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i] / M;
}
