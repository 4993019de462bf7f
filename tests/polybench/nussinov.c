/* nussinov.c: PolyBench/C 4.2 medley/nussinov, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(N)
# ifdef MINI_DATASET
#  define N 60
# endif
# ifdef SMALL_DATASET
#  define N 180
# endif
# ifdef MEDIUM_DATASET
#  define N 500
# endif
#endif

#define _PB_N POLYBENCH_LOOP_BOUND(N,n)

#define DATA_TYPE int
#define DATA_PRINTF_MODIFIER "%d "

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

/* nussinov.h: the sequence's element type */
typedef char base;

/* RNA bases represented as chars, range is [0,3] */
#define match(b1, b2) (((b1)+(b2)) == 3 ? 1 : 0)
#define max_score(s1, s2) ((s1 >= s2) ? s1 : s2)

/* Original version by Dave Wonnacott at Haverford College <davew@cs.haverford.edu>,
 * with help from Allison Lake, Ting Zhou, and Tian Jin,
 * based on algorithm by Nussinov, described in Allison Lake's senior thesis.
 */
static
void kernel_nussinov(int n, base POLYBENCH_1D(seq,N,n),
                           DATA_TYPE POLYBENCH_2D(table,N,N,n,n))
{
  int i, j, k;

#pragma scop
 for (i = _PB_N-1; i >= 0; i--) {
  for (j=i+1; j<_PB_N; j++) {

   if (j-1>=0)
      table[i][j] = max_score(table[i][j], table[i][j-1]);
   if (i+1<_PB_N)
      table[i][j] = max_score(table[i][j], table[i+1][j]);

   if (j-1>=0 && i+1<_PB_N) {
     /* don't allow adjacent elements to bond */
     if (i<j-1)
        table[i][j] = max_score(table[i][j], table[i+1][j-1]+match(seq[i], seq[j]));
     else
        table[i][j] = max_score(table[i][j], table[i+1][j-1]);
   }

   for (k=i+1; k<j; k++) {
      table[i][j] = max_score(table[i][j], table[i][k] + table[k+1][j]);
   }
  }
 }
#pragma endscop

}
